-- Free and total bytes of the server's disk holding the store: gpuledger_store_disk_{free,total}_bytes.
SELECT free_space, total_space
FROM system.disks
WHERE name = {disk:String}
