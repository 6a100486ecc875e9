"""Engine-against-engine matches: ``quantfish match``.

* ``config``: what a match is (engines, limits, book, adjudication), parsed from command-line text.
* ``uci``: one UCI engine process behind pipes, with timeouts on every answer.
* ``game``: one game between two started engines, refereed with python-chess (clocks, adjudication, faults).
* ``runner``: game pairs by index (opening, colours swapped), batches of pairs, concurrency, SPRT stop.
* ``stats``: pentanomial score, Elo with its interval, the generalized SPRT.
* ``pgn`` and ``report``: the games as PGN, the summary as text and JSON.

A pair of games is a pure function of (config, pair index), so batches of pairs played anywhere aggregate to
the same statistics as one local run.
"""
