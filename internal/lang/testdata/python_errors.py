import os


def good(a):
    """Still parsed."""
    return os.path.join(a)


def broken(:
    return 1 +


class AlsoGood:
    def method(self):
        return good(self)

x = = 3
