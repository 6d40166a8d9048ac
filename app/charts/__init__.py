"""Pure figure builders: numpy/pandas in, plotly.graph_objects.Figure out (one module per concept)."""
