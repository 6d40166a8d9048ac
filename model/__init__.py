"""The Transformer of "Attention Is All You Need", built to hand back every attention weight it uses.

Pure PyTorch; nothing here imports from ``app`` or Streamlit.
"""
