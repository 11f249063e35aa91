"""lib/market"""
