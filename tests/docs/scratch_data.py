"""A unittest base whose tests record into a scratch docs/data
(evidence_lib.common.DATA, the one name the recorders read it from, points
into a temporary directory for each test), never into the repository's."""
import importlib
import os
import pkgutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import evidence_lib  # noqa: E402
from evidence_lib import common  # noqa: E402


def other_holders(path):
    """The names outside evidence_lib.common (in evidence.py and the other
    modules of evidence_lib) that hold `path`: what they point at, patching
    common.DATA does not move."""
    modules = [importlib.import_module("evidence")] + [
        importlib.import_module(f"evidence_lib.{m.name}")
        for m in pkgutil.iter_modules(evidence_lib.__path__)]
    return [f"{m.__name__}.{name}" for m in modules if m is not common
            for name, value in vars(m).items() if isinstance(value, str) and value == path]


class ScratchDataTest(unittest.TestCase):
    def setUp(self):
        self.assertEqual(other_holders(common.DATA), [],
                         "docs/data is read from elsewhere than evidence_lib.common.DATA")
        self.tmp = tempfile.TemporaryDirectory()
        self.saved = common.DATA
        common.DATA = os.path.join(self.tmp.name, "data")

    def tearDown(self):
        common.DATA = self.saved
        self.tmp.cleanup()
