with open("order.txt", "a") as f:
    f.write("publish\n")
print("published " + open("report.txt").read().strip())
