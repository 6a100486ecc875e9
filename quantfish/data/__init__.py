"""What data generation and training both read: the 32-byte training record and its files (``records``), its
packing in compiled code (``codec``), ``FEN | score | result`` text (``text``), and opening books
(``openings``, with the book shipped in ``books/``)."""
