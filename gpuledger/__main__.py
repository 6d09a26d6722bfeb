from gpuledger.cli import main

raise SystemExit(main())
