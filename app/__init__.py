"""Streamlit views and Plotly figure builders. No tensor math here: app asks model/ and draws."""
