"""python3 -m serene: prints what the package is and where it was built."""
from . import __doc__ as _doc, __file__ as _file, _serene

print(_doc.strip().splitlines()[0])
print("package:", _file)
print("extension:", _serene.__file__)
