"""Training our own nets: data records, the PyTorch trainer, export to .nnue (torch is an optional extra)."""
