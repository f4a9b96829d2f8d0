# attack: opens a str subclass whose startswith/partition lie to the hook
# expect: file access outside sandbox
class S(str):
    def startswith(self, *a):
        return True

    def partition(self, *a):
        return ("json", "", "")

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


print(open(S("/etc/passwd")).read())
