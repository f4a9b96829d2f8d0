# attack: reads the repository with the guard off: the mount namespace hides it
# expect: not found | permission denied
# guard: off
print(open('{{REPO}}/pyproject.toml').read())
