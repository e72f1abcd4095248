"""Placeholder until the rule lands."""


def check(tree, options):
    return []
