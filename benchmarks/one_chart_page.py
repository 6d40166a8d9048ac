"""The baseline page for a first visit's time: nothing but one 2x2 st.plotly_chart, served by `streamlit run` from
the project root like the app (so .streamlit/config.toml applies). What it costs is what Streamlit and Plotly cost
on the machine at that moment; benchmarks/first_visit.py and tests/e2e/test_first_visit.py measure the Translate
page against it."""
import plotly.graph_objects as go
import streamlit as st

st.plotly_chart(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])), theme=None)
