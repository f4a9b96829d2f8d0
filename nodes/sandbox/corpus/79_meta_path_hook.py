# attack: puts its own finder first in sys.meta_path, then triggers an import
# expect: blocked: import hooks changed | blocked import
import random

sys = random._os.sys


class Finder:
    def find_spec(self, name, path=None, target=None):
        print("hooked", name)
        return None


sys.meta_path.insert(0, Finder())
import json.tool
