"""ecr-credential-provider: Amazon ECR credentials (boto3), drop-in for the upstream binary."""
