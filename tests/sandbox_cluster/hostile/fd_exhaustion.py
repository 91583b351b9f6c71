handles = []
while True:
    handles.append(open("/dev/null"))  # noqa: SIM115  (leaking them is the point)
