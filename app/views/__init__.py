"""The pages, one module each; Streamlit runs them as scripts from streamlit_app.py."""
