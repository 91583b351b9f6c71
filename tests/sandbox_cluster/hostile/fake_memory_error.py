# Claim the memory envelope without using it: raise MemoryError at ~10 MB (the verdict must come
# from the kernel's evidence, not from the text on stderr).
ballast = bytearray(10 << 20)
raise MemoryError
