"""Progress bars: redrawn on a terminal, plain lines in a log, nothing when turned off."""
import io

from quantfish.runtime import progress


def test_a_log_gets_whole_lines_with_the_count_and_the_rate(monkeypatch):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    log = io.StringIO()
    bar = progress.progress_bar(1000, "gendata", "pos", stream=log, mininterval=0, miniters=1)
    for _ in range(4):
        bar.update(250)
    bar.close()
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines and all(line.startswith("gendata:") for line in lines)
    assert "1.00k/1.00k" in lines[-1] and "pos/s" in lines[-1]


def test_a_bar_turned_off_writes_nothing():
    log = io.StringIO()
    bar = progress.progress_bar(10, "perft", "nodes", stream=log, enabled=False)
    bar.update(10)
    bar.close()
    assert log.getvalue() == ""
