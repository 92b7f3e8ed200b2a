"""mia.training"""
