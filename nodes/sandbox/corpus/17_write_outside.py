# attack: writes a file next to the host canary
# expect: file access outside sandbox
open('{{CANARY_DIR}}/PWNED', 'w').write('pwned')
