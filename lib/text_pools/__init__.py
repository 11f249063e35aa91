"""lib/text_pools"""
