from pdx.cli import main

# The guard matters: engines that spawn processes (vLLM) re-import the main module.
if __name__ == "__main__":
    main()
