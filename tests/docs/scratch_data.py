"""A unittest base whose tests record into a scratch docs/data (evidence.DATA
points into a temporary directory for each test), never into the repository's."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
import evidence  # noqa: E402


class ScratchDataTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.saved = evidence.DATA
        evidence.DATA = os.path.join(self.tmp.name, "data")

    def tearDown(self):
        evidence.DATA = self.saved
        self.tmp.cleanup()
