"""Reading the layer dumps in tests/data/nnue (sf15.1_layers.txt, sf17.1_layers.txt)."""


def parse_layers_line(parts):
    """A ``layers B name v v ... name v ...`` line, split: (bucket, {name: [ints]})."""
    d, key = {}, None
    for tok in parts[2:]:
        if tok.lstrip("-").isdigit():
            d[key].append(int(tok))
        else:
            key = tok
            d[key] = []
    return int(parts[1]), d
