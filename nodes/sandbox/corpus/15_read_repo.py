# attack: reads a file of the repository
# expect: file access outside sandbox
print(open('{{REPO}}/pyproject.toml').read())
