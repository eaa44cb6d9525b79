print("forum")
