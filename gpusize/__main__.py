from gpusize.cli import main

raise SystemExit(main())
