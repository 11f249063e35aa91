"""lib/operations"""
