"""The Heads and attribution page's sections, one module each: `switch_off` (head importance, switching heads
off), `attribution`, `compare` (two sentences side by side), `learning` (watch attention learn), and `pickers` (the
kind / layer / head picker and axis labels they share). Plain modules of functions: app/views/heads.py is the page;
it picks a section and calls it."""
