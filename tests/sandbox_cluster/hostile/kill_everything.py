import os

os.kill(-1, 9)
print(42)
