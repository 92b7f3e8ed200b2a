"""mia.memory"""
