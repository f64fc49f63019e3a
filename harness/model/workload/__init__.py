"""What clients ask for: the shape of a create, sandbox templates, arrival kinds, lifetimes."""
