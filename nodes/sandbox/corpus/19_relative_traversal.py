# attack: climbs out of the working directory with ../
# expect: file access outside sandbox
print(open('../../../../etc/passwd').read())
