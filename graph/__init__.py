"""mia.graph"""
