"""mia.app"""
