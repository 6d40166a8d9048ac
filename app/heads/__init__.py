"""The Heads and attribution page's sections, one module each (app/views/heads.py is the page).

    pickers      the kind / layer / head picker and axis labels the sections share
    switch_off   section 1: head importance, switching heads off (Michel et al., 2019)
    attribution  section 2: rollout, norm-based attention and gradient x input
    compare      section 3: the same head on two sentences side by side
    learning     section 4: watch attention learn, through the model's snapshots
    head_map     section 5: the map of all heads by how alike they attend, and one head's queries and keys
"""
