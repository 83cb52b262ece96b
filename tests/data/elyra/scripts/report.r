cat("hello from R\n")
