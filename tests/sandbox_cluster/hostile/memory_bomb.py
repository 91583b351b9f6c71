hoard = []
while True:
    hoard.append(bytearray(10**7))
