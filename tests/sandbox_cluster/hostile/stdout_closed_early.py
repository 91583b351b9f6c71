import os

os.close(1)
print("42" * 100000)
