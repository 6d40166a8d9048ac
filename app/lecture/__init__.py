"""lecture"""
