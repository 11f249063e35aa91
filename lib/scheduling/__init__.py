"""lib/scheduling"""
