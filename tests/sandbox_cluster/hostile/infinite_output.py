line = "y" * 4096
while True:
    print(line)
