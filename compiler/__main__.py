from paddlegen.compiler.cli import main

main()
