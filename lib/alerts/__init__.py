"""lib/alerts"""
