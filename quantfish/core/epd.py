"""Reading perft suites: ``FEN ;D1 20 ;D2 400`` (also ``FEN; D1 20; D2 400``) one position a line."""


def parse_perft_line(line):
    """(fen, [(depth, count), ...]) from one suite line, or None for blank and comment lines."""
    line = line.replace("\x00", "").strip()
    if not line or line.startswith("#"):
        return None
    parts = [p.strip() for p in line.split(";")]
    fen = parts[0]
    expected = []
    for part in parts[1:]:
        if not part:
            continue
        tag, _, value = part.partition(" ")
        if len(tag) < 2 or tag[0] not in "Dd" or not tag[1:].isdigit():
            raise ValueError(f"bad perft field {part!r}")
        expected.append((int(tag[1:]), int(value.strip())))
    return fen, expected


def read_perft_suite(path):
    with open(path) as fh:
        rows = []
        for number, line in enumerate(fh, 1):
            try:
                parsed = parse_perft_line(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
            if parsed:
                rows.append(parsed)
        return rows
