"""Progress for the example training loops: a tqdm bar on a terminal, the seeds' plain lines
(the loss every 20 steps) otherwise."""

import sys


class Progress:
    def __init__(self, total: int, desc: str):
        self._bar = None
        if sys.stdout.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="step")

    def step(self):
        if self._bar is not None:
            self._bar.update(1)

    def print(self, value):
        """The seeds' periodic print: into the bar's postfix on a terminal, a line otherwise."""
        if self._bar is None:
            print(value)
        elif isinstance(value, str):
            self._bar.set_postfix_str(value)
        else:
            self._bar.set_postfix(loss=f"{value:.4f}")

    def close(self):
        if self._bar is not None:
            self._bar.close()
