"""huggingface"""
