with open("order.txt", "a") as f:
    f.write("prepare\n")
with open("data.txt", "w") as f:
    f.write("rows=3\n")
