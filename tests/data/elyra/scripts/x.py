print("x ran")
