import sys

sys.stdout.write("9" * (3 * 2**20))
