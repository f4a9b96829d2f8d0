# attack: walks every object with gc to find the guard
# expect: blocked import: gc
import gc
print(len(gc.get_objects()))
