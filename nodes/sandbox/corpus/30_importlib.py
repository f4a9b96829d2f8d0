# attack: imports importlib to load anything
# expect: blocked import: importlib
import importlib
importlib.import_module('os').system('id')
