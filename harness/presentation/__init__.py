"""What a person sees: the terminal output, the pictures and the HTML report."""
