"""lib/collection"""
