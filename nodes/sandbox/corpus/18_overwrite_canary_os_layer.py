# attack: overwrites the world-writable host canary with the guard off
# expect: not found | permission denied
# guard: off
open('{{CANARY}}', 'w').write('pwned')
